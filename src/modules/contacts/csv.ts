/**
 * A streaming RFC 4180 CSV reader: quoted fields, doubled quotes, CR/LF/CRLF, newlines inside quotes.
 * Feed it text chunks; it yields complete records. Hand-written because it is 50 lines and the appliance
 * should not grow a dependency for it; the tests pin the tricky cases.
 */
export function createCsvReader() {
  let field = "";
  let record: string[] = [];
  let inQuotes = false;
  let quotePending = false; // saw a quote inside quotes: end of field or the first half of ""
  let lastWasCr = false;
  let touched = false; // the current record has content (so a trailing newline does not emit an empty row)

  function* push(chunk: string): Generator<string[]> {
    for (let i = 0; i < chunk.length; i++) {
      const ch = chunk[i]!;
      if (inQuotes) {
        if (quotePending) {
          quotePending = false;
          if (ch === '"') {
            field += '"';
            continue;
          }
          inQuotes = false; // fall through: the closing quote ended the quoted part
        } else if (ch === '"') {
          quotePending = true;
          continue;
        } else {
          field += ch;
          continue;
        }
      }
      if (ch === '"' && field === "") {
        inQuotes = true;
        touched = true;
      } else if (ch === ",") {
        record.push(field);
        field = "";
        touched = true;
      } else if (ch === "\n" || ch === "\r") {
        if (ch === "\n" && lastWasCr) {
          lastWasCr = false;
          continue;
        }
        lastWasCr = ch === "\r";
        if (touched || field !== "") {
          record.push(field);
          yield record;
        }
        record = [];
        field = "";
        touched = false;
        continue;
      } else {
        field += ch;
        touched = true;
      }
      lastWasCr = false;
    }
  }

  function* end(): Generator<string[]> {
    if (quotePending) {
      quotePending = false;
      inQuotes = false;
    }
    if (touched || field !== "") {
      record.push(field);
      yield record;
    }
    record = [];
    field = "";
    touched = false;
  }

  return { push, end };
}
