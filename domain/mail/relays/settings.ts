import { requireMember } from '../../accounts/projects.ts';
import type { Doc } from '../../../ports/store.ts';
import type { Platform } from '../../../runtime/platform.ts';
import { invalid, notFound } from '../../errors.ts';
import { nowIso } from '../../ids.ts';
import { PROVIDERS, RELAY_PROVIDERS, type RelayCredential, type RelayProviderName } from './providers.ts';

/**
 * A project's settings for one relay provider: what its webhook posts are checked with. The
 * secret is kept as given (an HMAC needs it) and never shown again; `_id` is `projectId/provider`.
 */
export interface RelaySettingsDoc extends Doc {
  projectId: string;
  provider: RelayProviderName;
  signingKey?: string;
  topicArn?: string;
  updatedAt: string;
}

const relaySettings = (p: Platform) => p.store.collection<RelaySettingsDoc>('relay_settings');

/** Where the provider posts: the URL to paste into its webhook settings. */
export const webhookUrl = (p: Platform, provider: RelayProviderName, projectId: string) => `${p.config.publicUrl}/v1/relay-events/${provider}/${projectId}`;

const view = (p: Platform, doc: RelaySettingsDoc) => ({
  provider: doc.provider,
  webhookUrl: webhookUrl(p, doc.provider, doc.projectId),
  ...(doc.topicArn ? { topicArn: doc.topicArn } : {}),
  updatedAt: doc.updatedAt,
});

/** Sets (or replaces) a provider's settings; admins only. The provider's one setting is required. */
export async function setRelay(p: Platform, projectId: string, userId: string, provider: RelayProviderName, input: { signingKey?: string; topicArn?: string }) {
  await requireMember(p, projectId, userId, 'ADMIN');
  const { setting, problemWith } = PROVIDERS[provider];
  const other = setting === 'signingKey' ? 'topicArn' : 'signingKey';
  if (input[other] !== undefined) throw invalid(other, `${provider} takes ${setting}, not ${other}`, 'unrecognized');
  const value = input[setting];
  if (value === undefined) throw invalid(setting, `${provider} needs ${setting}`, 'required');
  const problem = problemWith(value);
  if (problem) throw invalid(setting, problem);
  const doc: RelaySettingsDoc = { _id: `${projectId}/${provider}`, projectId, provider, [setting]: value, updatedAt: nowIso() };
  await relaySettings(p).replaceOne({ _id: doc._id }, doc, { upsert: true });
  return view(p, doc);
}

export async function listRelays(p: Platform, projectId: string, userId: string) {
  await requireMember(p, projectId, userId);
  const docs = await relaySettings(p).find({ _id: { $in: RELAY_PROVIDERS.map((name) => `${projectId}/${name}`) } });
  return RELAY_PROVIDERS.flatMap((name) => docs.filter((d) => d.provider === name).map((d) => view(p, d)));
}

export async function removeRelay(p: Platform, projectId: string, userId: string, provider: RelayProviderName): Promise<void> {
  await requireMember(p, projectId, userId, 'ADMIN');
  const removed = await relaySettings(p).deleteOne({ _id: `${projectId}/${provider}` });
  if (!removed) throw notFound('Relay settings');
}

/** What the project's posts from this provider are checked with, if it set the provider up. */
export async function relayCredential(p: Platform, projectId: string, provider: RelayProviderName): Promise<RelayCredential | undefined> {
  const doc = await relaySettings(p).findOne({ _id: `${projectId}/${provider}` });
  const setting = PROVIDERS[provider].setting;
  const value = doc?.[setting];
  return value ? { setting, value } : undefined;
}
