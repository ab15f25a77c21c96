/**
 * Every built-in connector, format and connection type: the declarations of each family (its folder's index.ts),
 * declared into the registry of every host (the main thread and each rule worker).
 */
import type { Declaration } from './declaration.js';
import { edgexDeclarations } from './edgex/index.js';
import { fileDeclarations } from './file/index.js';
import { formatDeclarations } from './formats/index.js';
import { generatorDeclarations } from './generators/index.js';
import { httpDeclarations } from './http/index.js';
import { influxDeclarations } from './influx/index.js';
import { logDeclarations } from './log/index.js';
import { mediaDeclarations } from './media/index.js';
import { memoryDeclarations } from './memory/index.js';
import { mqttDeclarations } from './mqtt/index.js';
import { neuronDeclarations } from './neuron/index.js';
import { redisDeclarations } from './redis/index.js';
import { sqlDeclarations } from './sql/index.js';
import { websocketDeclarations } from './websocket/index.js';
import { zmqDeclarations } from './zmq/index.js';

export const BUILTIN_DECLARATIONS: readonly Declaration[] = [
  ...formatDeclarations,
  ...memoryDeclarations,
  ...mqttDeclarations,
  ...logDeclarations,
  ...httpDeclarations,
  ...fileDeclarations,
  ...redisDeclarations,
  ...websocketDeclarations,
  ...sqlDeclarations,
  ...generatorDeclarations,
  ...influxDeclarations,
  ...edgexDeclarations,
  ...zmqDeclarations,
  ...mediaDeclarations,
  ...neuronDeclarations,
];
