/** This server's version, as GET /version reports it (package.json's; a test keeps them equal). */
export const VERSION = '0.1.0';
