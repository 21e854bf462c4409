// `npm start`: embedded mode, one process serving the API, hosting the actors and running the mailer.
// With MAILROOM_MODE=distributed: the api app behind its Dapr sidecar.
import { main } from '../../runtime/main.ts';

await main('api');
