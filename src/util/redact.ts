/**
 * Secrets out of text that Keel stores or prints: provider errors can echo an Authorization header
 * or an API key, and a model URL can carry credentials. What matches is replaced by a marker.
 */
const RULES: [RegExp, string][] = [
  // user:password@ in a URL
  [/\b([a-z][a-z0-9+.-]*:\/\/)[^\s/@:]+:[^\s/@]*@/gi, '$1[redacted]@'],
  // Authorization / API key headers, as text or JSON
  [
    /\b(authorization|proxy-authorization|x-api-key|api-key|x-goog-api-key)("?\s*[:=]\s*"?)(?:(?:bearer|basic|token)\s+)?[^\s",;']+/gi,
    '$1$2[redacted]',
  ],
  [/\bBearer\s+[A-Za-z0-9._~+/=-]{8,}/g, 'Bearer [redacted]'],
  // Well-known key shapes
  [/\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{16,}/g, 'sk-[redacted]'],
  [/\bAIza[0-9A-Za-z_-]{30,}/g, 'AIza[redacted]'],
  // Keys in a query string
  [/([?&](?:key|api_key|apikey|token|access_token|auth)=)[^&\s"']+/gi, '$1[redacted]'],
];

/** Cheap first look: text with none of these cannot match a rule. */
const MAYBE = /@|=|sk-|AIza|bearer|authorization|api-key/i;

export function redact(text: string): string {
  if (!MAYBE.test(text)) return text;
  let out = text;
  for (const [re, to] of RULES) out = out.replace(re, to);
  return out;
}
