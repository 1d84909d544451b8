// An event as the API shows it (lib/events.ts eventJson): the one response schema for GET /events and GET /account/events.
import { z } from 'zod';

export const eventSchema = z.object({
  id: z.number(),
  type: z.string(),
  subject: z.string().nullable(),
  data: z.record(z.string(), z.unknown()),
  created_at: z.string(),
});
