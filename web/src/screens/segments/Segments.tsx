import { Route, Routes } from 'react-router';
import { NewSegment } from './NewSegment.tsx';
import { SegmentDetail } from './SegmentDetail.tsx';
import { SegmentList } from './SegmentList.tsx';

/** Segments: the list, a new segment, one segment (its condition or members, and its members list). */
export default function Segments() {
  return (
    <Routes>
      <Route index element={<SegmentList />} />
      <Route path="new" element={<NewSegment />} />
      <Route path=":segmentId" element={<SegmentDetail />} />
    </Routes>
  );
}
