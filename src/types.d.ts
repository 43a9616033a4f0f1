/** Files embedded into the binary by Bun's loaders. */
declare module "*.sql" {
  const text: string;
  export default text;
}
declare module "*/standalone.js" {
  /** Path of the embedded file (import … with { type: "file" }). */
  const path: string;
  export default path;
}
