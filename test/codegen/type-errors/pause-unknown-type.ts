// X4: pause takes only the schema's job types and topics: a misspelt job type is refused at compile time.
import type { JobsPublisher } from "../schemas/shop.generated.js";

declare const publisher: JobsPublisher;
void publisher.pause({ jobType: "sendEmial" }); // error: TS2820
