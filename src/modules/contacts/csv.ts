/**
 * A streaming RFC 4180 CSV reader: quoted fields, doubled quotes, CR/LF/CRLF, newlines inside quotes.
 * Feed it text chunks; it yields complete records — or null for a record longer than `maxRecord`
 * characters, whose text is dropped as it streams by (an endless quoted field cannot exhaust memory).
 * Hand-written because it is 60 lines and the appliance should not grow a dependency for it; the tests pin
 * the tricky cases.
 */
export function createCsvReader({ maxRecord = Infinity }: { maxRecord?: number } = {}) {
  let size = 0; // characters of the current record
  let oversize = false;
  let field = "";
  let fieldStarted = false; // (not `field !== ""`: an oversize record keeps no text)
  let record: string[] = [];
  let inQuotes = false;
  let quotePending = false; // saw a quote inside quotes: end of field or the first half of ""
  let lastWasCr = false;
  let touched = false; // the current record has content (so a trailing newline does not emit an empty row)

  const add = (ch: string) => {
    fieldStarted = true;
    if (oversize) return;
    if (++size > maxRecord) {
      oversize = true;
      field = "";
      record = [];
    } else field += ch;
  };
  const complete = (): string[] | null => {
    const out = oversize ? null : (record.push(field), record);
    record = [];
    field = "";
    fieldStarted = false;
    touched = false;
    size = 0;
    oversize = false;
    return out;
  };

  function* push(chunk: string): Generator<string[] | null> {
    for (let i = 0; i < chunk.length; i++) {
      const ch = chunk[i]!;
      if (inQuotes) {
        if (quotePending) {
          quotePending = false;
          if (ch === '"') {
            add('"');
            continue;
          }
          inQuotes = false; // fall through: the closing quote ended the quoted part
        } else if (ch === '"') {
          quotePending = true;
          continue;
        } else {
          add(ch);
          continue;
        }
      }
      if (ch === '"' && !fieldStarted) {
        inQuotes = true;
        fieldStarted = true;
        touched = true;
      } else if (ch === ",") {
        if (!oversize) record.push(field);
        field = "";
        fieldStarted = false;
        touched = true;
      } else if (ch === "\n" || ch === "\r") {
        if (ch === "\n" && lastWasCr) {
          lastWasCr = false;
          continue;
        }
        lastWasCr = ch === "\r";
        if (touched || field !== "" || oversize) yield complete();
        else complete();
        continue;
      } else {
        add(ch);
        touched = true;
      }
      lastWasCr = false;
    }
  }

  function* end(): Generator<string[] | null> {
    if (quotePending) {
      quotePending = false;
      inQuotes = false;
    }
    if (touched || field !== "" || oversize) yield complete();
    else complete();
  }

  return { push, end };
}
