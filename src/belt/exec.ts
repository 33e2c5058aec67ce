/** The installed bundle's entry of built-in tool exec (`belt/exec.js`): its code and nothing of toolgate's. @module */
import "../../tools/src/exec.ts";
