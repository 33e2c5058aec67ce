/** The installed bundle's entry of built-in tool fs_mkdir (`belt/fs_mkdir.js`): its code and nothing of toolgate's. @module */
import "../../tools/src/fs_mkdir.ts";
