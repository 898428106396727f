/**
 * The heartbeat benchmark's flood process (forked by run.ts with tsx's loader): answers the
 * valid client's commands over IPC until told to exit (flood.ts).
 */
import { floodChild } from './flood.js'

await floodChild()
