/** The installed bundle's entry of built-in tool fs_search (`belt/fs_search.js`): its code and nothing of toolgate's. @module */
import "../../tools/src/fs_search.ts";
