/** The installed bundle's entry of built-in tool get_time (`belt/get_time.js`): its code and nothing of toolgate's. @module */
import "../../tools/src/get_time.ts";
