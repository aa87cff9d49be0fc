// expect: 2:11 interface Jobs must be exported, under its own name
interface Jobs {
  sendEmail: { address: string };
}
export type { Jobs as Work };
