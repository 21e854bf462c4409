/**
 * Every string of the subscription pages (unsubscribe, subscribe, manage), of their error pages
 * and of the footer of marketing email (footer.ts), in every shipped language, and the rule that
 * picks one (the spec's contact rule 2): the contact's `data.locale` when it is shipped, else the
 * project's language when it is shipped, else English. Placeholders are `{email}` and
 * `{project}`; values are inserted (escaped) by the page or footer renderer, never here.
 *
 * To add a language: add its ISO 639-1 code to LANGUAGES and a dictionary below; the type
 * `Strings` makes a missing string a compile error.
 */
export const LANGUAGES = ['en', 'de', 'fr', 'es'] as const;
export type Language = (typeof LANGUAGES)[number];
export const DEFAULT_LANGUAGE: Language = 'en';

export interface Strings {
  unsubscribeTitle: string;
  unsubscribeQuestion: string;
  unsubscribeExplain: string;
  unsubscribeButton: string;
  unsubscribedTitle: string;
  unsubscribedDone: string;
  unsubscribedUndo: string;
  resubscribeButton: string;
  subscribeTitle: string;
  subscribeQuestion: string;
  subscribeExplain: string;
  subscribeButton: string;
  subscribedTitle: string;
  subscribedDone: string;
  manageTitle: string;
  manageSubscribed: string;
  manageUnsubscribed: string;
  notFoundTitle: string;
  notFoundText: string;
  tooManyTitle: string;
  tooManyText: string;
  errorTitle: string;
  errorText: string;
  footerNotice: string;
  footerUnsubscribe: string;
  footerPreferences: string;
}

const en: Strings = {
  unsubscribeTitle: 'Unsubscribe',
  unsubscribeQuestion: 'Unsubscribe {email} from {project}?',
  unsubscribeExplain: 'You will no longer receive marketing email from {project}. Messages about your account or orders may still be sent.',
  unsubscribeButton: 'Unsubscribe',
  unsubscribedTitle: 'Unsubscribed',
  unsubscribedDone: '{email} is unsubscribed from {project}.',
  unsubscribedUndo: 'Unsubscribed by mistake?',
  resubscribeButton: 'Subscribe again',
  subscribeTitle: 'Subscribe',
  subscribeQuestion: 'Subscribe {email} to {project}?',
  subscribeExplain: 'You will receive marketing email from {project}. You can unsubscribe at any time.',
  subscribeButton: 'Subscribe',
  subscribedTitle: 'Subscribed',
  subscribedDone: '{email} is subscribed to {project}.',
  manageTitle: 'Email preferences',
  manageSubscribed: '{email} receives marketing email from {project}.',
  manageUnsubscribed: '{email} does not receive marketing email from {project}.',
  notFoundTitle: 'Link not valid',
  notFoundText: 'This link is not valid. It may be incomplete, or the subscription it belongs to no longer exists.',
  tooManyTitle: 'Too many requests',
  tooManyText: 'Please wait a minute and try again.',
  errorTitle: 'Something went wrong',
  errorText: 'Please try again in a few minutes.',
  footerNotice: 'You are receiving this email because you are subscribed to {project}.',
  footerUnsubscribe: 'Unsubscribe',
  footerPreferences: 'Email preferences',
};

const de: Strings = {
  unsubscribeTitle: 'Abmelden',
  unsubscribeQuestion: '{email} von {project} abmelden?',
  unsubscribeExplain:
    'Sie erhalten dann keine Marketing-E-Mails mehr von {project}. Nachrichten zu Ihrem Konto oder Ihren Bestellungen können weiterhin gesendet werden.',
  unsubscribeButton: 'Abmelden',
  unsubscribedTitle: 'Abgemeldet',
  unsubscribedDone: '{email} ist von {project} abgemeldet.',
  unsubscribedUndo: 'Versehentlich abgemeldet?',
  resubscribeButton: 'Wieder anmelden',
  subscribeTitle: 'Anmelden',
  subscribeQuestion: '{email} bei {project} anmelden?',
  subscribeExplain: 'Sie erhalten dann Marketing-E-Mails von {project}. Sie können sich jederzeit wieder abmelden.',
  subscribeButton: 'Anmelden',
  subscribedTitle: 'Angemeldet',
  subscribedDone: '{email} ist bei {project} angemeldet.',
  manageTitle: 'E-Mail-Einstellungen',
  manageSubscribed: '{email} erhält Marketing-E-Mails von {project}.',
  manageUnsubscribed: '{email} erhält keine Marketing-E-Mails von {project}.',
  notFoundTitle: 'Ungültiger Link',
  notFoundText: 'Dieser Link ist ungültig. Er ist möglicherweise unvollständig, oder das Abonnement existiert nicht mehr.',
  tooManyTitle: 'Zu viele Anfragen',
  tooManyText: 'Bitte warten Sie eine Minute und versuchen Sie es dann erneut.',
  errorTitle: 'Etwas ist schiefgelaufen',
  errorText: 'Bitte versuchen Sie es in einigen Minuten erneut.',
  footerNotice: 'Sie erhalten diese E-Mail, weil Sie bei {project} angemeldet sind.',
  footerUnsubscribe: 'Abmelden',
  footerPreferences: 'E-Mail-Einstellungen',
};

// French puts a no-break space before "?".
const fr: Strings = {
  unsubscribeTitle: 'Se désabonner',
  unsubscribeQuestion: 'Désabonner {email} de {project}\u00a0?',
  unsubscribeExplain:
    'Vous ne recevrez plus d’e-mails marketing de {project}. Les messages concernant votre compte ou vos commandes peuvent encore vous être envoyés.',
  unsubscribeButton: 'Se désabonner',
  unsubscribedTitle: 'Désabonnement confirmé',
  unsubscribedDone: 'L’adresse {email} est désabonnée de {project}.',
  unsubscribedUndo: 'Désabonnement par erreur\u00a0?',
  resubscribeButton: 'Se réabonner',
  subscribeTitle: 'S’abonner',
  subscribeQuestion: 'Abonner {email} à {project}\u00a0?',
  subscribeExplain: 'Vous recevrez les e-mails marketing de {project}. Vous pourrez vous désabonner à tout moment.',
  subscribeButton: 'S’abonner',
  subscribedTitle: 'Abonnement confirmé',
  subscribedDone: 'L’adresse {email} est abonnée à {project}.',
  manageTitle: 'Préférences e-mail',
  manageSubscribed: 'L’adresse {email} reçoit les e-mails marketing de {project}.',
  manageUnsubscribed: 'L’adresse {email} ne reçoit pas les e-mails marketing de {project}.',
  notFoundTitle: 'Lien non valide',
  notFoundText: 'Ce lien n’est pas valide. Il est peut-être incomplet, ou l’abonnement auquel il correspond n’existe plus.',
  tooManyTitle: 'Trop de requêtes',
  tooManyText: 'Veuillez patienter une minute, puis réessayer.',
  errorTitle: 'Une erreur s’est produite',
  errorText: 'Veuillez réessayer dans quelques minutes.',
  footerNotice: 'Vous recevez cet e-mail parce que vous êtes abonné à {project}.',
  footerUnsubscribe: 'Se désabonner',
  footerPreferences: 'Préférences e-mail',
};

const es: Strings = {
  unsubscribeTitle: 'Cancelar suscripción',
  unsubscribeQuestion: '¿Cancelar la suscripción de {email} a {project}?',
  unsubscribeExplain:
    'Ya no recibirás correos de marketing de {project}. Es posible que sigas recibiendo mensajes sobre tu cuenta o tus pedidos.',
  unsubscribeButton: 'Cancelar suscripción',
  unsubscribedTitle: 'Suscripción cancelada',
  unsubscribedDone: 'La dirección {email} ya no está suscrita a {project}.',
  unsubscribedUndo: '¿Has cancelado la suscripción por error?',
  resubscribeButton: 'Volver a suscribirse',
  subscribeTitle: 'Suscribirse',
  subscribeQuestion: '¿Suscribir {email} a {project}?',
  subscribeExplain: 'Recibirás correos de marketing de {project}. Puedes cancelar la suscripción en cualquier momento.',
  subscribeButton: 'Suscribirse',
  subscribedTitle: 'Suscripción confirmada',
  subscribedDone: 'La dirección {email} está suscrita a {project}.',
  manageTitle: 'Preferencias de correo',
  manageSubscribed: 'La dirección {email} recibe correos de marketing de {project}.',
  manageUnsubscribed: 'La dirección {email} no recibe correos de marketing de {project}.',
  notFoundTitle: 'Enlace no válido',
  notFoundText: 'Este enlace no es válido. Puede estar incompleto o la suscripción a la que pertenece ya no existe.',
  tooManyTitle: 'Demasiadas solicitudes',
  tooManyText: 'Espera un minuto y vuelve a intentarlo.',
  errorTitle: 'Algo salió mal',
  errorText: 'Vuelve a intentarlo en unos minutos.',
  footerNotice: 'Recibes este correo porque estás suscrito a {project}.',
  footerUnsubscribe: 'Cancelar suscripción',
  footerPreferences: 'Preferencias de correo',
};

const DICTIONARY: Record<Language, Strings> = { en, de, fr, es };

export const isLanguage = (code: unknown): code is Language => typeof code === 'string' && (LANGUAGES as readonly string[]).includes(code);

/** The strings of one language. */
export const stringsFor = (language: Language): Strings => DICTIONARY[language];

/** Contact rule 2: the contact's locale, then the project's language, then English; only shipped ones count. */
export function pageLanguage(contactLocale: unknown, projectLanguage: unknown): Language {
  const locale = typeof contactLocale === 'string' ? contactLocale.toLowerCase() : contactLocale;
  const project = typeof projectLanguage === 'string' ? projectLanguage.toLowerCase() : projectLanguage;
  if (isLanguage(locale)) return locale;
  if (isLanguage(project)) return project;
  return DEFAULT_LANGUAGE;
}

/**
 * For pages that know no contact (a bad link): the browser's preferred shipped language from
 * `Accept-Language` (by q-value, then order), else English.
 */
export function languageFromAcceptLanguage(header: string | undefined): Language {
  if (!header) return DEFAULT_LANGUAGE;
  const ranked = header
    .split(',')
    .slice(0, 20)
    .map((part, index) => {
      const [tag, ...params] = part.trim().split(';');
      const q = params.map((p) => /^\s*q\s*=\s*([0-9.]+)\s*$/i.exec(p)?.[1]).find((v) => v !== undefined);
      return { code: tag.trim().split('-')[0].toLowerCase(), q: q === undefined ? 1 : Number(q), index };
    })
    .filter((entry) => Number.isFinite(entry.q) && entry.q > 0 && isLanguage(entry.code))
    .sort((a, b) => b.q - a.q || a.index - b.index);
  return (ranked[0]?.code as Language | undefined) ?? DEFAULT_LANGUAGE;
}
