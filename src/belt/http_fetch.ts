/** The installed bundle's entry of built-in tool http_fetch (`belt/http_fetch.js`): its code and nothing of toolgate's. @module */
import "../../tools/src/http_fetch.ts";
