// expect: 5:11 interface Results must be exported, under its own name
export interface Jobs {
  sendEmail: { address: string };
}
interface Results {
  sendEmail: { messageId: string };
}
export const unused: Results | null = null;
