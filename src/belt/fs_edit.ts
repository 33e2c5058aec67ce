/** The installed bundle's entry of built-in tool fs_edit (`belt/fs_edit.js`): its code and nothing of toolgate's. @module */
import "../../tools/src/fs_edit.ts";
