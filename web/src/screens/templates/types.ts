import type { z } from 'zod';
import type { templateSchema } from '../../../../domain/templates/schema.ts';

export type Template = z.output<typeof templateSchema>;

export interface TemplatePage {
  templates: Template[];
  total: number;
  page: number;
  pageSize: number;
  totalPages: number;
}
