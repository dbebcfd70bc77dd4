/**
 * Runs `attempt` with the expiry (ms) of a token that lapses in a few seconds: it starts a
 * subscription with such a token and checks what must arrive before the expiry. A loaded machine
 * may take longer than that to start it and deliver, so an attempt that failed, or ended, once
 * the expiry had passed is played again with twice the lifetime (3, 6, 12, 24 s). A failure
 * before the expiry fails at once. Resolves with the attempt's value and its expiry.
 */
export async function beforeTokenExpiry<T>(attempt: (expiresAtMs: number) => Promise<T>): Promise<{ value: T; expiresAtMs: number }> {
  for (let seconds = 3; ; seconds *= 2) {
    // JWT expiry has a resolution of one second: this one lapses seconds - 1 to seconds from now.
    const expiresAtMs = (Math.floor(Date.now() / 1000) + seconds) * 1000;
    const last = seconds >= 24;
    try {
      const value = await attempt(expiresAtMs);
      if (Date.now() < expiresAtMs || last) return { value, expiresAtMs };
    } catch (error) {
      if (Date.now() < expiresAtMs || last) throw error;
    }
  }
}
