/**
 * `POST /ruleset/import` and `POST /ruleset/export` (docs/rest-api.md §8).
 */
import type { FastifyInstance } from 'fastify';
import { EddyError, ErrorCode } from '../core/errors.js';
import { restated, rethrowing, sendText } from './http.js';
import { readImportBody, sourceProblem } from './data.js';
import { sendDownload } from './download.js';
import { RULESET_KEYS, importSource, parseSections, sourceText } from '../bundle/bundle.js';
import type { BundleService } from '../bundle/service.js';

export function registerRulesetRoutes(http: FastifyInstance, bundle: BundleService): void {
  http.post('/ruleset/import', async (req, reply) => {
    const body = readImportBody(req, 'Invalid body: Error decoding json: ', 'rulesetInfo');
    const src = importSource(body);
    if ('problem' in src) throw new EddyError(ErrorCode.Undefined, sourceProblem(src.problem, ': bad request'));
    const text = await rethrowing(() => sourceText(src, bundle.fileRoots), restated('Fail to read file: '));
    const rs = rethrowing(
      () => parseSections(text, RULESET_KEYS, 'Ruleset'),
      restated('Import ruleset error: invalid import file: '),
    );
    const n = await bundle.importRuleset(rs);
    return sendText(reply, 200, `imported ${n.streams} streams, ${n.tables} tables and ${n.rules} rules`);
  });

  http.post('/ruleset/export', async (req, reply) => sendDownload(req, reply, JSON.stringify(bundle.exportRuleset())));
}
