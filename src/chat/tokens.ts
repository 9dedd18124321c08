import { Tiktoken } from 'js-tiktoken/lite';
import o200k from 'js-tiktoken/ranks/o200k_base';

/** o200k_base: the tokenizer of current OpenAI models, a fair estimate for other vendors' models. */
export const TOKENIZER_MODEL = 'o200k_base';
let enc: Tiktoken | null = null;

export function countTokens(text: string): number {
  enc ??= new Tiktoken(o200k);
  return text ? enc.encode(text).length : 0;
}
