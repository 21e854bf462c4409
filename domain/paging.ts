/** The page fields of a paged listing (`page` 1-based). */
export const pageOf = (query: { page: number; pageSize: number }, total: number) => ({
  page: query.page,
  pageSize: query.pageSize,
  total,
  totalPages: Math.ceil(total / query.pageSize),
});
