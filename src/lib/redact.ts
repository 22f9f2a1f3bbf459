/** A connection URL fit to be shown in a log line or an error: its password replaced by `***`. */
export function withoutPassword(url: string): string {
  const parsed = URL.parse(url);
  if (!parsed?.password) return url;
  parsed.password = '***';
  return parsed.toString();
}
