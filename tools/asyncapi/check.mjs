// Parses an AsyncAPI document with @asyncapi/parser and exits non-zero on any diagnostic of
// severity error or warning (pkg/contract's TestAsyncAPIParses runs it).
import { readFileSync } from 'node:fs';
import { Parser, fromFile } from '@asyncapi/parser';

const path = process.argv[2];
if (!path) {
  console.error('usage: node check.mjs ASYNCAPI.json');
  process.exit(2);
}
const parser = new Parser();
const { document, diagnostics } = await fromFile(parser, path).parse();
// severity: 0 error, 1 warning, 2 information, 3 hint
const bad = diagnostics.filter((d) => d.severity <= 1);
for (const d of diagnostics) {
  console.log(`${['error', 'warning', 'info', 'hint'][d.severity]} ${d.code} at ${d.path.join('.')}: ${d.message}`);
}
if (!document || bad.length > 0) {
  console.error(`${path}: ${bad.length} error(s) or warning(s)`);
  process.exit(1);
}
console.log(`${path}: AsyncAPI ${document.version()}, ${document.channels().length} channels, ${document.operations().length} operations, ${document.messages().length} messages`);
