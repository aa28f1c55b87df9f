// Every /api/v1/* endpoint of the table (src/contracts/endpoints.ts) in one function: vercel.json
// rewrites /api/v1/(.*) here after the static files and their extensionless routes, and the request
// keeps its own path, which dispatches as on the local server (docs/api.md, Deploying on Vercel).
import { createVercelHandler } from "../../src/http/vercel.ts";

export default createVercelHandler();
