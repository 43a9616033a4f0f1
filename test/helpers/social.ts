/** Social accounts of the test apps: one sandbox account per platform with fixed ids. */
export const SOCIAL = {
  instagram: "0193a4b2-0000-7000-8000-0000000000b1",
  facebook: "0193a4b2-0000-7000-8000-0000000000b2",
  x: "0193a4b2-0000-7000-8000-0000000000b3",
  tiktok: "0193a4b2-0000-7000-8000-0000000000b4",
} as const;

export function sandboxSocialAccounts(company = "default") {
  return Object.entries(SOCIAL).map(([platform, id]) => ({ id, company, platform, provider: "sandbox", name: `${platform} sandbox` }));
}

export const IMAGE = { url: "https://cdn.example.com/a.jpg" };
export const VIDEO = { url: "https://cdn.example.com/v.mp4" };
