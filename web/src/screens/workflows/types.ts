import type { z } from 'zod';
import type { executionSchema, stepSchema, transitionSchema, workflowSchema, workflowWithStepsSchema } from '../../../../domain/workflows/schema.ts';

export type Workflow = z.output<typeof workflowSchema>;
export type WorkflowWithSteps = z.output<typeof workflowWithStepsSchema>;
export type Step = z.output<typeof stepSchema>;
export type Transition = z.output<typeof transitionSchema>;
export type Execution = z.output<typeof executionSchema>;
export type StepType = Step['type'];

export interface Paged {
  page: number;
  pageSize: number;
  total: number;
  totalPages: number;
}
