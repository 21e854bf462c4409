import { z } from 'zod';
import {
  audienceCountSchema,
  campaignSchema,
  campaignStatsSchema,
  createCampaignSchema,
  listCampaignsQuery,
  sendCampaignSchema,
  testCampaignSchema,
  updateCampaignSchema,
} from '../../../domain/campaigns/schema.ts';
import {
  campaignStats,
  cancelCampaign,
  countAudience,
  createCampaign,
  deleteCampaign,
  duplicateCampaign,
  getCampaign,
  listCampaigns,
  sendCampaign,
  sendTestEmail,
  updateCampaign,
} from '../../../domain/campaigns/service.ts';
import { LIMITS } from '../../../domain/limits.ts';
import type { Platform } from '../../../runtime/platform.ts';
import { reply, route, type RouteSpec } from '../http/route.ts';
import { idParams } from './common.ts';

/** Campaign bodies carry HTML up to 512 KB; JSON escaping can double it. */
const CAMPAIGN_BODY_LIMIT = LIMITS.body.contentBytes;

export function campaignRoutes(p: Platform): RouteSpec[] {
  return [
    route({
      method: 'get', path: '/campaigns', tag: 'Campaigns', auth: 'secret',
      summary: 'List campaigns, newest first, page-numbered; `status` filters',
      query: listCampaignsQuery,
      response: z.object({
        campaigns: z.array(campaignSchema),
        page: z.number().int(),
        pageSize: z.number().int(),
        total: z.number().int(),
        totalPages: z.number().int(),
      }),
      handle: ({ auth, query }) => listCampaigns(p, auth.projectId, query),
    }),
    route({
      method: 'post', path: '/campaigns', tag: 'Campaigns', auth: 'secret', bodyLimit: CAMPAIGN_BODY_LIMIT,
      summary: 'Create a campaign in DRAFT; `from` must be on a verified domain of the project',
      body: createCampaignSchema,
      response: campaignSchema,
      handle: ({ auth, body }) => createCampaign(p, auth.projectId, body),
    }),
    route({
      method: 'post', path: '/campaigns/audience/count', tag: 'Campaigns', auth: 'secret',
      summary: 'Count the subscribed contacts an audience (ALL, a segment, or a filter) reaches now, without a campaign',
      body: audienceCountSchema,
      response: z.object({ count: z.number().int().describe('Subscribed contacts a send now would queue') }),
      handle: ({ auth, body }) => countAudience(p, auth.projectId, body),
    }),
    route({
      method: 'get', path: '/campaigns/:id', tag: 'Campaigns', auth: 'secret', errors: [404],
      summary: 'One campaign',
      params: idParams,
      response: campaignSchema,
      handle: ({ auth, params }) => getCampaign(p, auth.projectId, params.id),
    }),
    route({
      method: 'put', path: '/campaigns/:id', tag: 'Campaigns', auth: 'secret', errors: [404, 409], bodyLimit: CAMPAIGN_BODY_LIMIT,
      summary: 'Change the given fields; DRAFT or SCHEDULED only (409 INVALID_STATE otherwise)',
      params: idParams,
      body: updateCampaignSchema,
      response: campaignSchema,
      handle: ({ auth, params, body }) => updateCampaign(p, auth.projectId, params.id, body),
    }),
    route({
      method: 'post', path: '/campaigns/:id/send', tag: 'Campaigns', auth: 'secret', errors: [404, 409],
      summary: 'Send now (SENDING) or at `scheduledFor` (SCHEDULED); from DRAFT or SCHEDULED; no body sends now',
      params: idParams,
      body: sendCampaignSchema,
      bodyOptional: true,
      response: campaignSchema,
      handle: async ({ auth, params, body }) => {
        const { campaign, message } = await sendCampaign(p, auth.projectId, params.id, body.scheduledFor ?? null);
        return reply(campaign, { message });
      },
    }),
    route({
      method: 'post', path: '/campaigns/:id/cancel', tag: 'Campaigns', auth: 'secret', errors: [404, 409],
      summary: 'Cancel a SCHEDULED campaign, or stop a SENDING one',
      params: idParams,
      response: campaignSchema,
      handle: ({ auth, params }) => cancelCampaign(p, auth.projectId, params.id),
    }),
    route({
      method: 'post', path: '/campaigns/:id/test', tag: 'Campaigns', auth: 'secret', errors: [404],
      summary: 'Send one test email now to `email` (not counted in stats)',
      params: idParams,
      body: testCampaignSchema,
      response: z.object({ email: z.string(), to: z.string() }),
      handle: async ({ auth, params, body }) => reply(await sendTestEmail(p, auth.projectId, params.id, body.email), { message: `Test email sent to ${body.email}` }),
    }),
    route({
      method: 'get', path: '/campaigns/:id/stats', tag: 'Campaigns', auth: 'secret', errors: [404],
      summary: "Outcomes of the campaign's emails",
      params: idParams,
      response: campaignStatsSchema,
      handle: ({ auth, params }) => campaignStats(p, auth.projectId, params.id),
    }),
    route({
      method: 'delete', path: '/campaigns/:id', tag: 'Campaigns', auth: 'secret', errors: [404, 409],
      summary: 'Delete a DRAFT or CANCELLED campaign',
      params: idParams,
      response: z.null(),
      handle: async ({ auth, params }) => {
        await deleteCampaign(p, auth.projectId, params.id);
        return reply(null, { message: 'Campaign deleted' });
      },
    }),
    route({
      method: 'post', path: '/campaigns/:id/duplicate', tag: 'Campaigns', auth: 'secret', status: 201, errors: [404],
      summary: 'A new DRAFT with the same content and settings',
      params: idParams,
      response: campaignSchema,
      handle: ({ auth, params }) => duplicateCampaign(p, auth.projectId, params.id),
    }),
  ];
}
