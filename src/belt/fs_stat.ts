/** The installed bundle's entry of built-in tool fs_stat (`belt/fs_stat.js`): its code and nothing of toolgate's. @module */
import "../../tools/src/fs_stat.ts";
