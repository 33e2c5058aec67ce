/** The installed bundle's entry of built-in tool fs_write_file (`belt/fs_write_file.js`): its code and nothing of toolgate's. @module */
import "../../tools/src/fs_write_file.ts";
