/** The installed bundle's entry of built-in tool fs_list_dir (`belt/fs_list_dir.js`): its code and nothing of toolgate's. @module */
import "../../tools/src/fs_list_dir.ts";
