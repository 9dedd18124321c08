import { ApiKeySchema, UserSchema } from './entities.js';

/** Every entity the ORM knows; domains add theirs here. */
export const entities = [UserSchema, ApiKeySchema];
