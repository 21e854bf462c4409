/**
 * Every size a client controls, in one place. The zod schemas of the routes use these, so each
 * limit is enforced where the request is validated (422 VALIDATION_ERROR naming the field, or
 * 413 PAYLOAD_TOO_LARGE for a body or file) and shows in the OpenAPI document. The README's
 * Limits section and docs/decisions.md list them for people.
 */
export const LIMITS = {
  /** Request bodies (413 PAYLOAD_TOO_LARGE). */
  body: {
    /** Any JSON body, unless the route says otherwise. */
    defaultBytes: 1024 * 1024,
    /** Templates and campaigns: a 512 KB HTML body, which JSON escaping can double. */
    contentBytes: 2 * 1024 * 1024,
    /** /v1/send: ten attachments of 10 MB together, base64-encoded, plus the message. */
    sendBytes: 15 * 1024 * 1024,
    /** POST /contacts/import: the CSV file (spec). */
    csvBytes: 5 * 1024 * 1024,
    /** Objects and arrays inside one another in a JSON body (the deepest the API reads is about 6). */
    depth: 32,
  },
  /** Rows of a CSV import, header excluded: the job reading a file of more fails (FAILED, nothing imported). */
  csvRows: 50_000,
  /** Email addresses (RFC 5321's path limit). */
  email: 254,
  password: { min: 8, max: 256 },
  /** Ids in paths and bodies. */
  id: 200,
  /** Names of templates, segments, campaigns, sender display names. */
  name: 200,
  projectName: 100,
  /** A project's postal address, printed in the footer of marketing email: a few lines. */
  projectAddress: 500,
  description: 1000,
  /** RFC 5322's line limit: a longer subject cannot be one header line. */
  subject: 998,
  /** HTML body of a template or campaign, in bytes of UTF-8. */
  htmlBodyBytes: 512 * 1024,
  /** HTML body of a /v1/send call, in characters. */
  sendBodyChars: 1024 * 1024,
  eventName: 200,
  /** Free-text search parameters. */
  search: 254,
  /** `data` on contacts, /v1/track and /v1/send: a flat object of simple values (depth 1; a non-persistent value is `{value, persistent}`). */
  data: {
    keysPerRequest: 100,
    /** Keys kept on one contact: a call that would grow a contact past this is refused. */
    keysPerContact: 250,
    keyLength: 100,
    stringValue: 10_000,
  },
  send: {
    /** Recipients in `to`. */
    recipients: 100,
    attachments: 10,
    /** Decoded size of all attachments together (spec). */
    attachmentBytes: 10 * 1024 * 1024,
    filename: 255,
    headers: 50,
    headerValue: 1000,
  },
  /** Contact ids per bulk subscribe, unsubscribe or delete (spec). */
  bulkIds: 1000,
  /** Emails per static segment member add or remove. */
  segmentMembers: 1000,
  filter: {
    groups: 50,
    filtersPerGroup: 50,
    /** A string `value` of a filter. */
    value: 10_000,
  },
  /** A feedback report posted to /v1/complaints. */
  complaintReportBytes: 1024 * 1024,
  /** The inbound SMTP listener: past `messageBytes` a message is refused (552), past `recipients` a RCPT (452). */
  inbound: {
    messageBytes: 25 * 1024 * 1024,
    recipients: 100,
    /** Attachments `email.received` lists (name, type, size) of one message. */
    attachmentsListed: 100,
  },
  pageSize: 100,
  /** Periods of one GET /events/stats?interval= call (a store query each): a year of days. */
  statsBuckets: 366,
} as const;
