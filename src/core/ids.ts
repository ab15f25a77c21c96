/** Identifier checks shared by rules and external services (eKuiper's id rules). */
import { idTooLong } from './limits.js';

export const INVALID_ID_CHARS = ['/', '#', '%'];

/** eKuiper's id check: no surrounding blanks, none of `/ # %`. Returns the error detail or undefined. */
export function checkRuleId(id: string): string | undefined {
  // eKuiper's text has a space after the colon here, none in the invalid-character text
  if (id.trim() !== id) return `ruleID: ${id} should be trimed`;
  const long = idTooLong('ruleID:', id);
  if (long) return long;
  for (const c of INVALID_ID_CHARS) if (id.includes(c)) return `ruleID:${id} contains invalidChar:${c}`;
  return undefined;
}
