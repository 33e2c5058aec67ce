/** The installed bundle's entry of built-in tool job (`belt/job.js`): its code and nothing of toolgate's. @module */
import "../../tools/src/job.ts";
