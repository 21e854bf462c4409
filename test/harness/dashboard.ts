// Where the dashboard's browser tests start: an instance with a verified user who owns a project,
// then Chromium with that user signed in through the sign-in form, as a user arrives at a screen.
import type { Browser, Page } from 'playwright-core';
import { newProject, type ProjectAccess } from './accounts.ts';
import { newUserPage } from './browser.ts';
import { verifiedDomain, type Domain } from './domains.ts';
import { startInstance, type Instance, type InstanceOptions } from './instance.ts';

/** An instance with a verified user who owns a project named `name` (and a verified sending domain, if asked). */
export async function startWithProject(name: string, options: InstanceOptions & { domain: true }): Promise<Started & { domain: Domain }>;
export async function startWithProject(name: string, options?: InstanceOptions): Promise<Started>;
export async function startWithProject(name: string, options: InstanceOptions & { domain?: boolean } = {}): Promise<Started & { domain?: Domain }> {
  const { domain: withDomain, ...instanceOptions } = options;
  const instance = await startInstance(instanceOptions);
  try {
    const project = await newProject(instance, name);
    return { instance, project, ...(withDomain ? { domain: await verifiedDomain(instance, project) } : {}) };
  } catch (err) {
    await instance.dispose(); // the caller never gets it to stop
    throw err;
  }
}

interface Started {
  instance: Instance;
  project: ProjectAccess;
}

/** Fills the sign-in form with the user's email and password and sends it. */
export async function submitSignIn(page: Page, user: { email: string; password: string }): Promise<void> {
  await page.getByLabel('Email').fill(user.email);
  await page.getByLabel('Password').fill(user.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

/**
 * A page of `user` (signed out, in a context of its own) that opens `path`, is sent to the sign-in
 * page and signs in there; the caller waits for what `path` shows.
 */
export async function signInThroughForm(browser: Browser, instance: Instance, user: { email: string; password: string }, path: string): Promise<Page> {
  const page = await newUserPage(browser, instance.url);
  await page.goto(path);
  await page.waitForURL((url) => url.pathname === '/signin');
  await submitSignIn(page, user);
  return page;
}

/** Closes what a file started; either may be missing when its start failed. */
export async function stopDashboard(browser: Browser | undefined, instance: Instance | undefined): Promise<void> {
  await browser?.close();
  await instance?.dispose();
}
