import { createVercelHandler } from "../../../src/http/vercel.ts";

// One Vercel function per route path; methods on the same path share it and dispatch by the endpoint table.
export default createVercelHandler(["trusted_publishing_exchange"]);
