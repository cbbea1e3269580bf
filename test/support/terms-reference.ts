/**
 * R23: the split the shortlist's terms were first made with — a regular expression with
 * look-behinds — kept as the reference the index's own tokenising is held to (terms.test.ts,
 * index.test.ts): runs of ASCII letters and digits, cut at a lower→upper hump and between letters
 * and digits, without empty strings.
 */
const SPLIT = /[^A-Za-z0-9]+|(?<=[a-z])(?=[A-Z])|(?<=[A-Za-z])(?=\d)|(?<=\d)(?=[A-Za-z])/;

export const referencePieces = (text: string): string[] => text.split(SPLIT).filter((p) => p.length > 0);
