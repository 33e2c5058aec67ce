/** The installed bundle's entry of built-in tool fs_read_lines (`belt/fs_read_lines.js`): its code and nothing of toolgate's. @module */
import "../../tools/src/fs_read_lines.ts";
