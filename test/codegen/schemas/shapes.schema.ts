// Every kind of payload type the run-time check describes: the golden module shows their shapes.

export enum Priority {
  Low = 1,
  High = 2,
}

export enum Channel {
  Mail = "mail",
  Sms = "sms",
}

export type UserId = string & { readonly __brand: "UserId" };

export interface Audited {
  createdBy: UserId;
}

export type Event = { type: "created"; id: number } | { type: "renamed"; id: number; name: string } | { type: "deleted"; id: number; at: Date };

export interface Tree {
  label: string;
  children: Tree[];
}

export interface Everything extends Audited {
  text: string;
  count: number;
  flag: boolean;
  mode: "fast" | "slow";
  answer: 42;
  yes: true;
  priority: Priority;
  channel: Channel;
  maybe: string | null;
  optional?: number;
  orUndefined: string | undefined;
  list: number[];
  pair: [string, number];
  optionalTail: [string, number?];
  nested: { deep: { deeper: string[] } };
  both: { a: string } & { b: number };
  record: Record<string, { at: Date }>;
  index: { [key: string]: boolean };
  anything: unknown;
  // biome-ignore lint/suspicious/noExplicitAny: the shape of `any` is under test
  loose: any;
  mixed: string | number | boolean;
  event: Event;
  tree: Tree;
}

/** Any JSON in `body`: the encoder's own refusals (NaN, functions, cycles) are what is checked. */
export interface Opaque {
  address: string;
  body: unknown;
}

export interface Jobs {
  everything: Everything;
  opaque: Opaque;
  events: Event;
  tree: Tree;
}
