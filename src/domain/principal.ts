export const ROLES = ['user', 'admin', 'superadmin', 'worker'] as const;
export type Role = (typeof ROLES)[number];

/** The authenticated caller: `sub` from the token, and its role. */
export interface Principal {
  sub: string;
  role: Role;
  /** When the token expires (ms since the epoch); absent for a token without `exp`. */
  expiresAtMs?: number;
}

export const isRole = (value: unknown): value is Role => ROLES.includes(value as Role);
