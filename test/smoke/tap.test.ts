import t from 'tap';
import { ToolError } from '../../src/tools/types.js';
t.ok(new ToolError('x').isToolError);
