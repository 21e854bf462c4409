import type { ApiClient } from './client.ts';
import type { Instance } from './instance.ts';

export interface ProjectAccess {
  token: string;
  userId: string;
  email: string;
  password: string;
  projectId: string;
  secretKey: string;
  publicKey: string;
  /** Client authenticated with the project's secret key. */
  api: ApiClient;
}

let counter = 0;

/** Signs a user up, follows the link from the verification email received over SMTP, logs in. */
export async function verifiedUser(instance: Instance, email = `owner${++counter}-${Date.now()}@example.com`) {
  const password = 'correct horse battery';
  const signup = await instance.api.post('/auth/signup', { email, password });
  if (signup.status !== 201) throw new Error(`signup failed: ${JSON.stringify(signup.body)}`);
  const mail = await instance.smtp.waitFor((m) => m.rcptTo.includes(email.toLowerCase()) && /verify/i.test(m.parsed.subject ?? ''));
  const link = /https?:\/\/\S+\/auth\/verify\?token=[\w-]+/.exec(mail.parsed.text ?? '')?.[0];
  if (!link) throw new Error('no verification link in the email');
  const verified = await instance.api.get(link.slice(link.indexOf('/auth/')));
  if (verified.status !== 200) throw new Error(`verify failed: ${JSON.stringify(verified.body)}`);
  const login = await instance.api.post('/auth/login', { email, password });
  return { token: login.body.data.token as string, userId: login.body.data.user.id as string, email, password };
}

/** A verified user with a fresh project: the usual starting point of a behaviour test. */
export async function newProject(instance: Instance, name = 'Test project'): Promise<ProjectAccess> {
  const user = await verifiedUser(instance);
  const created = await instance.api.post('/projects', { name }, { auth: user.token });
  if (created.status !== 201) throw new Error(`project creation failed: ${JSON.stringify(created.body)}`);
  const { id, secretKey, publicKey } = created.body.data;
  return { ...user, projectId: id, secretKey, publicKey, api: instance.api.as(secretKey) };
}
