import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { RouterProvider } from 'react-router/dom';
import { ApiError } from './api/client.ts';
import { SessionProvider } from './api/session.tsx';
import { NoticeProvider } from './app/notices.tsx';
import { router } from './app/routes.tsx';
import './styles.css';

const queryClient = new QueryClient({
  defaultOptions: {
    queries: {
      // An answer of the API (4xx) will not change by asking again; a network failure may.
      retry: (failures, error) => !(error instanceof ApiError) && failures < 2,
      refetchOnWindowFocus: false,
    },
  },
});

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <QueryClientProvider client={queryClient}>
      <SessionProvider>
        <NoticeProvider>
          <RouterProvider router={router} />
        </NoticeProvider>
      </SessionProvider>
    </QueryClientProvider>
  </StrictMode>,
);
