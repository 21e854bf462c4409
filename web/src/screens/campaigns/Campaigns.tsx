import { Route, Routes } from 'react-router';
import { CampaignDetail } from './CampaignDetail.tsx';
import { CampaignEditor } from './CampaignEditor.tsx';
import { CampaignList } from './CampaignList.tsx';
// The status badge, actions row and editor frame are styled with the builder's sheet.
import '../segments/segments.css';

/** Campaigns: the list by status, compose (new or edit), one campaign (actions by state, stats). */
export default function Campaigns() {
  return (
    <Routes>
      <Route index element={<CampaignList />} />
      <Route path="new" element={<CampaignEditor />} />
      <Route path=":campaignId/edit" element={<CampaignEditor />} />
      <Route path=":campaignId" element={<CampaignDetail />} />
    </Routes>
  );
}
