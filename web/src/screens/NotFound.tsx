import { Link } from 'react-router';
import { Page } from '../app/Page.tsx';
import { paths } from '../paths.ts';

export default function NotFound() {
  return (
    <Page title="Page not found">
      <p>
        There is no page at this address. <Link to={paths.home}>Go to your projects</Link>.
      </p>
    </Page>
  );
}
