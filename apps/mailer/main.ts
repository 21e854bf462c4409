// The mailer app of distributed mode (MAILROOM_MODE=distributed), behind its own Dapr sidecar.
import { main } from '../../runtime/main.ts';

await main('mailer');
