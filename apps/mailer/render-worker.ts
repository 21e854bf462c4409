// The body of a render-pool thread: one RenderTask in, the signed message out.
import { renderEmail, type RenderTask } from './render.ts';

export default (task: RenderTask) => renderEmail(task);
