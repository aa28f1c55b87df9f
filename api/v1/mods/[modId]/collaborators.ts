import { createVercelHandler } from "../../../../src/http/vercel.ts";

// Ownership is the local portal's (localPortalOnly): here the backend answers 501 not_implemented.
export default createVercelHandler(["add_collaborator", "remove_collaborator"]);
