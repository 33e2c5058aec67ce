/** The installed bundle's entry of built-in tool fs_read_file (`belt/fs_read_file.js`): its code and nothing of toolgate's. @module */
import "../../tools/src/fs_read_file.ts";
