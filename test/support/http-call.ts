/** One HTTP call to a mesh gateway: a JSON body (an object, or a string sent as is), the status and the text answered. */
export async function httpCall(
  baseUrl: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; text: string }> {
  const res = await fetch(`${baseUrl}${path}`, {
    method,
    ...(body === undefined
      ? {}
      : {
          headers: { 'content-type': 'application/json' },
          body: typeof body === 'string' ? body : JSON.stringify(body),
        }),
  });
  return { status: res.status, text: await res.text() };
}
