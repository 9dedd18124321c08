import { ApiKeySchema, SessionSchema, UserSchema } from './entities.js';

/** Every entity the ORM knows; domains add theirs here. */
export const entities = [UserSchema, ApiKeySchema, SessionSchema];
