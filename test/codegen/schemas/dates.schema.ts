// Date fields in every position the generated decoder revives.
export interface Meeting {
  title: string;
  startsAt: Date;
  endsAt?: Date;
  cancelledAt: Date | null;
  attendees: { name: string; invitedAt: Date }[];
  reminders: Date[];
  byRoom: Record<string, { bookedAt: Date }>;
  window: [Date, Date];
  notes: string[];
}

export interface Jobs {
  scheduleMeeting: Meeting;
  ping: { at: number };
}
