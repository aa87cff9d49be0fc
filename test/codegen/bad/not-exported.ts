// expect: 2:11 interface Jobs must be exported
interface Jobs {
  sendEmail: { address: string };
}
export const unused: Jobs | null = null;
