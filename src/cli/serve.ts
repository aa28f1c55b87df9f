export async function run(): Promise<number> {
  throw new Error("not yet");
}
