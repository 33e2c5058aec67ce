/** The installed bundle's entry of built-in tool fs_remove (`belt/fs_remove.js`): its code and nothing of toolgate's. @module */
import "../../tools/src/fs_remove.ts";
